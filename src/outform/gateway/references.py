"""`item_reference` input items, resolved against the caller's own stored items.

An input item `{"type": "item_reference", "id": "msg_..."}` (or `{"id": ...}` alone, as the
spec allows the type to be left out) stands for an item of an earlier stored response: one of
its input items or output items. It is replaced by that item, as stored, before the request is
checked and translated, so the backend, `input_items` and the conversation see the item itself.
Only the caller's tenant's items are found; another key's item answers exactly as an unknown
id does (404), so ids tell nothing about other tenants.

Clients reuse item ids across requests (replaying earlier items), so an id may be held by
several stored responses: the reference stands for the newest copy among those that still
exist (`ResponseStore.find_item`, one indexed lookup), so deleting one response never makes a
reference fail while another still holds the id.
"""

from __future__ import annotations

from typing import Any

from outform.gateway.replies import bad_request, not_found
from outform.gateway.store import ResponseStore


def is_reference(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    return kind == "item_reference" or (kind is None and "role" not in item and "id" in item)


async def resolve(store: ResponseStore, req: dict[str, Any], tenant: str) -> None:
    """Replace the references of `req["input"]` (a list) by the items they name."""
    value = req.get("input")
    if not isinstance(value, list) or not any(is_reference(item) for item in value):
        return
    resolved = []
    for index, item in enumerate(value):
        if not is_reference(item):
            resolved.append(item)
            continue
        item_id = item.get("id")
        where = f"input[{index}].id"
        if not isinstance(item_id, str) or not item_id:
            raise bad_request(
                "An item_reference needs the 'id' of a stored item.", where, "missing_required"
            )
        found = await store.find_item(item_id, tenant)
        if found is None:
            raise not_found(
                f"Item with id '{item_id}' not found: an item_reference names an input or "
                "output item of a response stored with this API key.",
                where,
            )
        resolved.append(found)
    req["input"] = resolved


__all__ = ["is_reference", "resolve"]
