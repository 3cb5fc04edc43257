"""The I/O of each batch API, through transport: upload, create, find, poll, download.

Each carrier pairs a pure API module (shapes) with the calls that move them. Nothing here
decides what a reply means; the runner does, and the manifest records it.

The call that creates a batch makes something that costs money: it is sent with
`resend=False` (transport retries it only when no attempt can have acted on it), and just
before it `sending()` is called, so that the runner records that the batch may exist from then
on. Uploads before it are retried as any call (a file uploaded twice costs nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

from outform.batch.anthropic_batch import AnthropicBatch
from outform.batch.api import BatchApi, BatchState, Found, batch_label
from outform.batch.bedrock_batch import OUTPUT_SUFFIX, BedrockBatch
from outform.batch.gemini_batch import GeminiBatch
from outform.batch.manifest import BatchRecord
from outform.batch.openai_batch import OpenAIBatch
from outform.errors import ProviderError, UsageError
from outform.providers.base import WireRequest
from outform.transport import Endpoint, Transport, Upload

_MAX_PAGES = 50


class Carrier(Protocol):
    @property
    def api(self) -> BatchApi: ...

    def submit(
        self, job: str, key: str, chunk: Path, first: WireRequest, sending: Callable[[], None]
    ) -> str:
        """Send one framed chunk of requests as a provider batch; its provider id.
        `sending()` is called just before the call that creates it, and after any upload."""
        ...

    def find(self, job: str, waiting: Sequence[BatchRecord], known: set[str]) -> dict[str, str]:
        """Which of the batches recorded as `submitting` the provider has: key -> id."""
        ...

    def state(self, provider_id: str) -> BatchState: ...

    def results(self, state: BatchState) -> Iterator[bytes]: ...


def _origin(endpoint: Endpoint) -> Endpoint:
    parts = urlsplit(endpoint.base_url)
    return dataclasses.replace(endpoint, base_url=f"{parts.scheme}://{parts.netloc}")


def _relative(url: str) -> str:
    """The path and query of a URL the provider handed back: calls go to the configured host
    only, so a key is never sent to a host named in a reply."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


class _Polled(Protocol):
    def retrieve(self, provider_id: str) -> WireRequest: ...

    def state(self, body: Mapping[str, Any]) -> BatchState: ...


class _Files(_Polled, Protocol):
    """An API whose batches carry the job's label and whose results are files (OpenAI,
    Gemini)."""

    def listing(self, after: str | None) -> WireRequest: ...

    def found(self, body: Mapping[str, Any], job: str) -> tuple[list[Found], str | None]: ...

    def download(self, output: str) -> WireRequest: ...


A = TypeVar("A", bound=_Polled)
F = TypeVar("F", bound=_Files)
T = TypeVar("T")


class _Carrier(Generic[A]):
    """What every carrier shares: the transport, the endpoint, the pure API module; a batch's
    state, the provider's batches page by page, results read line by line. A carrier holds
    only what its API does otherwise."""

    def __init__(self, transport: Transport, endpoint: Endpoint, api: A) -> None:
        self.transport, self.endpoint, self.api = transport, endpoint, api

    def state(self, provider_id: str) -> BatchState:
        return self.api.state(self.transport.send(self.endpoint, self.api.retrieve(provider_id)))

    def _pages(
        self,
        listing: Callable[[str | None], WireRequest],
        read: Callable[[Mapping[str, Any]], tuple[list[T], str | None]],
    ) -> Iterator[list[T]]:
        """The provider's batches, a page at a time (at most `_MAX_PAGES`)."""
        after: str | None = None
        for _ in range(_MAX_PAGES):
            page, after = read(self.transport.send(self.endpoint, listing(after)))
            yield page
            if after is None:
                return

    def _lines(
        self, downloads: Iterable[WireRequest], at: Endpoint | None = None
    ) -> Iterator[bytes]:
        """The lines of each downloaded results file, as they arrive."""
        for download in downloads:
            yield from self.transport.lines(at or self.endpoint, download)


def _labelled(waiting: Sequence[BatchRecord], pages: Iterable[list[Found]]) -> dict[str, str]:
    """key -> provider id of the `waiting` batches among those listed (their label carries
    the job and the key), page after page until all are found."""
    keys = {b.key for b in waiting}
    found: dict[str, str] = {}
    for listed in pages:
        found.update({f.key: f.provider_id for f in listed if f.key in keys})
        if keys <= found.keys():
            break
    return found


class _FileCarrier(_Carrier[F]):
    """Batches found by the job's label, results downloaded as files (OpenAI, Gemini)."""

    def find(self, job: str, waiting: Sequence[BatchRecord], known: set[str]) -> dict[str, str]:
        return _labelled(waiting, self._pages(self.api.listing, lambda b: self.api.found(b, job)))

    def results(self, state: BatchState) -> Iterator[bytes]:
        return self._lines(self.api.download(output) for output in state.outputs)


class OpenAICarrier(_FileCarrier[OpenAIBatch]):
    def submit(
        self, job: str, key: str, chunk: Path, first: WireRequest, sending: Callable[[], None]
    ) -> str:
        upload = Upload(
            chunk,  # read as it is sent: a batch file of any size costs no memory
            media_type="application/jsonl",
            field="file",
            filename=f"{batch_label(job, key)}.jsonl",
        )
        reply = self.transport.exchange(self.endpoint, self.api.upload(), upload)
        file_id = self.api.uploaded_id(reply.body)
        create = self.api.create(file_id, self.api.endpoint_of(first), job, key)
        sending()
        return self.api.created_id(self.transport.send(self.endpoint, create, resend=False))


class AnthropicCarrier(_Carrier[AnthropicBatch]):
    def submit(
        self, job: str, key: str, chunk: Path, first: WireRequest, sending: Callable[[], None]
    ) -> str:
        upload = Upload(chunk, media_type="application/json")  # the create call's body
        sending()
        reply = self.transport.exchange(self.endpoint, self.api.create(), upload, resend=False)
        return self.api.created_id(reply.body)

    def find(self, job: str, waiting: Sequence[BatchRecord], known: set[str]) -> dict[str, str]:
        """No metadata on Message Batches: a batch created after the submission was recorded,
        of the same size, not known to the job already (see anthropic_batch)."""
        listed = [b for page in self._pages(self.api.listing, self.api.listed) for b in page]
        found: dict[str, str] = {}
        claimed = set(known)
        for batch in sorted(waiting, key=lambda b: b.started):
            for provider_id, created, size in listed:
                fits = size == batch.size and created >= batch.started - 5.0
                if fits and provider_id not in claimed:
                    found[batch.key] = provider_id
                    claimed.add(provider_id)
                    break
        return found

    def results(self, state: BatchState) -> Iterator[bytes]:
        # results_url's path is absolute (it carries the version): fetch it from the origin
        downloads = (self.api.download(output) for output in state.outputs)
        return self._lines(downloads, _origin(self.endpoint))


class GeminiCarrier(_FileCarrier[GeminiBatch]):
    def __init__(self, transport: Transport, endpoint: Endpoint, api: GeminiBatch) -> None:
        super().__init__(transport, _origin(endpoint), api)

    def submit(
        self, job: str, key: str, chunk: Path, first: WireRequest, sending: Callable[[], None]
    ) -> str:
        size = chunk.stat().st_size
        label = batch_label(job, key)
        start = self.transport.exchange(self.endpoint, self.api.upload_start(size, label))
        url = start.headers.get("x-goog-upload-url")
        if not url:
            raise ProviderError(
                "gemini did not return an upload URL", provider="gemini", fix="retry the job"
            )
        finish = self.api.upload_finish(_relative(url), size)
        # the SDK sends the bytes as application/json; the file's own type went with the start
        reply = self.transport.exchange(
            self.endpoint, finish, Upload(chunk, media_type="application/json")
        )
        create = self.api.create(first.path, self.api.uploaded_id(reply.body), label)
        sending()
        return self.api.created_id(self.transport.send(self.endpoint, create, resend=False))


@dataclasses.dataclass(frozen=True)
class S3Place:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, uri: str | None) -> S3Place:
        if not uri or not uri.startswith("s3://"):
            raise UsageError(
                "Bedrock batch inference needs an S3 location for its input and output",
                where="s3_uri",
                fix="pass --s3-uri s3://bucket/prefix/ (and --role-arn), or --live",
            )
        bucket, _, prefix = uri[5:].partition("/")
        return cls(bucket, prefix.strip("/") + "/" if prefix.strip("/") else "")

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def bedrock_place(s3_uri: str | None, role_arn: str | None) -> S3Place:
    """Where a Bedrock job's files go; a UsageError unless both settings are given."""
    place = S3Place.parse(s3_uri)
    if not role_arn:
        raise UsageError(
            "Bedrock batch inference needs a service role for the job",
            where="role_arn",
            fix="pass --role-arn arn:aws:iam::ACCOUNT:role/NAME, or --live",
        )
    return place


class BedrockCarrier(_Carrier[BedrockBatch]):
    """S3 through botocore's client (endpoint from AWS_ENDPOINT_URL_S3 when set, as botocore
    reads it), the control plane through transport, signed with SigV4."""

    def __init__(
        self,
        transport: Transport,
        endpoint: Endpoint,
        api: BedrockBatch,
        *,
        model: str,
        s3_uri: str | None,
        role_arn: str | None,
        env: Mapping[str, str],
    ) -> None:
        self.place = bedrock_place(s3_uri, role_arn)
        self.role_arn, self.model = str(role_arn), model
        region = endpoint.aws_region or "us-east-1"
        url = env.get("AWS_ENDPOINT_URL_BEDROCK") or f"https://bedrock.{region}.amazonaws.com"
        super().__init__(transport, dataclasses.replace(endpoint, base_url=url), api)
        self._s3: Any = None
        self._region = region

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            import botocore.session

            self._s3 = botocore.session.get_session().create_client("s3", region_name=self._region)
        return self._s3

    def submit(
        self, job: str, key: str, chunk: Path, first: WireRequest, sending: Callable[[], None]
    ) -> str:
        label = batch_label(job, key)
        input_key = f"{self.place.prefix}{job}/{key}.jsonl"
        with chunk.open("rb") as handle:
            self.s3.put_object(Bucket=self.place.bucket, Key=input_key, Body=handle)
        create = self.api.create(
            model=self.model,
            label=label,
            token=label,
            role_arn=self.role_arn,
            input_uri=self.place.uri(input_key),
            output_uri=self.place.uri(f"{self.place.prefix}{job}/{key}-out/"),
        )
        sending()
        return self.api.created_id(self.transport.send(self.endpoint, create, resend=False))

    def find(self, job: str, waiting: Sequence[BatchRecord], known: set[str]) -> dict[str, str]:
        pages = self._pages(
            lambda after: self.api.listing(job, after), lambda b: self.api.found(b, job)
        )
        return _labelled(waiting, pages)

    def results(self, state: BatchState) -> Iterator[bytes]:
        for output in state.outputs:
            place = S3Place.parse(output)
            pages = self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=place.bucket, Prefix=place.prefix
            )
            for page in pages:
                for item in page.get("Contents") or ():
                    if not str(item["Key"]).endswith(OUTPUT_SUFFIX):
                        continue
                    body = self.s3.get_object(Bucket=place.bucket, Key=item["Key"])["Body"]
                    yield from (line for line in body.iter_lines() if line.strip())


def carrier_for(
    api: BatchApi,
    transport: Transport,
    endpoint: Endpoint,
    *,
    model: str,
    s3_uri: str | None = None,
    role_arn: str | None = None,
    env: Mapping[str, str],
) -> Carrier:
    if isinstance(api, OpenAIBatch):
        return OpenAICarrier(transport, endpoint, api)
    if isinstance(api, AnthropicBatch):
        return AnthropicCarrier(transport, endpoint, api)
    if isinstance(api, GeminiBatch):
        return GeminiCarrier(transport, endpoint, api)
    if isinstance(api, BedrockBatch):
        return BedrockCarrier(
            transport, endpoint, api, model=model, s3_uri=s3_uri, role_arn=role_arn, env=env
        )
    raise UsageError(f"no carrier for batch API {api.name!r}")


__all__ = ["Carrier", "S3Place", "bedrock_place", "carrier_for"]
