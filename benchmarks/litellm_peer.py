"""LiteLLM's proxy as a Responses-over-Chat bridge, measured the way the gateway is.

LiteLLM is installed in its own virtual environment (`.venv-peers/litellm`, created on first
use), so its pins never touch outform's. It runs offline, as LiteLLM's proxy docs
describe: `LITELLM_LOCAL_MODEL_COST_MAP=True`, a master key, and `use_chat_completions_api`
so that `/v1/responses` is bridged to the fake backend's `/v1/chat/completions` instead of
being forwarded to a `/v1/responses` the fake does not have.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import bench_gateway as gateway

VERSION = "1.106.2"
VENV = gateway.ROOT / ".venv-peers" / "litellm"
MASTER_KEY = "sk-outform-bench"
SEQUENTIAL = 1_000
"""Fewer than for outform: at ~15 ms a request, 1,000 take 15 s."""


def executable() -> Path | None:
    """The `litellm` command, installing it on first use; None (and why) if that fails."""
    command = VENV / "bin" / "litellm"
    if command.exists():
        return command
    print(f"installing litellm[proxy]=={VERSION} into {VENV} (once)", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(VENV / "bin" / "pip"), "install", "--quiet", f"litellm[proxy]=={VERSION}"],
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"LiteLLM could not be installed ({exc}); its row is left out", file=sys.stderr)
        return None
    return command if command.exists() else None


def config(backend_port: int) -> str:
    return f"""model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: http://127.0.0.1:{backend_port}/v1
      api_key: sk-fake
      use_chat_completions_api: true
general_settings:
  master_key: {MASTER_KEY}
litellm_settings:
  telemetry: false
"""


def measure(backend_port: int, direct: gateway.Latency) -> gateway.PeerRow | None:
    command = executable()
    if command is None:
        return None
    port = gateway.free_port()
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "litellm.yaml"
        path.write_text(config(backend_port))
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "LITELLM_LOG": "ERROR",
            "DISABLE_SCHEMA_UPDATE": "True",
        }
        process = subprocess.Popen(
            [str(command), "--config", str(path), "--host", "127.0.0.1", "--port", str(port),
             "--num_workers", "1"],
            cwd=workdir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            if not _wait(port, process):
                print("LiteLLM's proxy did not start; its row is left out", file=sys.stderr)
                return None
            return _run(port, process.pid, direct)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait(port: int, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def _run(port: int, pid: int, direct: gateway.Latency) -> gateway.PeerRow:
    import uvloop

    headers = b"authorization: Bearer %s\r\n" % MASTER_KEY.encode()
    path = b"/v1/responses"

    async def main() -> tuple[gateway.Latency, float]:
        latency = await gateway.sequential(
            port, path, gateway.RESPONSES_BODY, pid, headers=headers, count=SEQUENTIAL,
            warmup=50,
        )  # fmt: skip
        rate = await gateway.throughput(port, path, gateway.RESPONSES_BODY, headers)
        return latency, rate

    latency, rate = uvloop.run(main())
    return gateway.PeerRow(
        f"LiteLLM {VERSION} proxy, `POST /v1/responses` (json_schema)",
        latency,
        latency.p50 - direct.p50,
        latency.p99 - direct.p99,
        rate,
    )
