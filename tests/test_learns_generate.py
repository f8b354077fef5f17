"""Generated learns against a local server that speaks the chat-completions protocol."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from click.testing import CliRunner

from knowledge_build import build, extract, load_config
from knowledge_build.chunking.learns_gen import GeneratedLearnsError
from knowledge_build.cli import main

from .conftest import FakeEmbedder

GOOD = '{"learns": ["移項のルールを使える", "符号を変えて項を移す方法", "方程式を整理する計算"]}'


def _start_chat_server():
    """Answers from a script (then GOOD); records every prompt it was sent. With `answers` set, it
    answers that many requests, then hangs up and stops listening (a server that died)."""
    state = {"script": [], "prompts": [], "answers": None}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if state["answers"] is not None and len(state["prompts"]) >= state["answers"]:
                self.close_connection = True  # no response at all, and nobody listening from now on
                threading.Thread(target=lambda: (server.shutdown(), server.server_close())).start()
                return
            state["prompts"].append(body["messages"][-1]["content"])
            content = state["script"].pop(0) if state["script"] else GOOD
            payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    state["stop"] = server.shutdown
    return state


@pytest.fixture
def chat_server():
    state = _start_chat_server()
    yield state
    state["stop"]()


def _generate(site_dir, chat_server, *extra):
    if "--retries" not in extra:
        extra = (*extra, "--retries", "0", "--timeout", "30")
    return CliRunner().invoke(main, ["learns", "generate", "--site", str(site_dir), "--base-url", chat_server["url"],
                                     "--model", "local-chat", "--format", "json", *extra])


def test_boxes_without_learns_get_generated_ones_and_humans_are_never_asked(site_dir, chat_server):
    before = {c.id: c.learns_source for c in extract(load_config(site=site_dir)).chunks if c.type != "example"}
    heuristic = sorted(i for i, s in before.items() if s == "heuristic")
    result = _generate(site_dir, chat_server)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["generated"] == heuristic and report["failed"] == {} and report["requests"] == len(heuristic)
    assert len(chat_server["prompts"]) == len(heuristic)  # yaml and data-learns boxes were never sent
    stored = yaml.safe_load((site_dir / "_data" / "learns.generated.yml").read_text(encoding="utf-8"))
    material, anchor = heuristic[0].split("#")
    assert stored[material][anchor]["learns"] == json.loads(GOOD)["learns"]

    chunks = {c.id: c for c in build(load_config(site=site_dir), embedder=FakeEmbedder()).chunks}
    assert chunks[heuristic[0]].learns_source == "generated"
    assert chunks[heuristic[0]].learns == tuple(json.loads(GOOD)["learns"])
    assert chunks["二次方程式#rule-quadratic-formula"].learns_source == "yaml"

    again = json.loads(_generate(site_dir, chat_server).stdout)
    assert again["generated"] == [] and again["requests"] == 0


def test_invalid_answers_are_retried_then_reported(site_dir, chat_server):
    one = '{"learns": ["ひとつだけ"]}'
    nine = json.dumps({"learns": [f"項目{i}" for i in range(9)]}, ensure_ascii=False)
    chat_server["script"] = ["this is not json", one, GOOD] + ["{bad"] * 3
    report = json.loads(_generate(site_dir, chat_server).stdout)
    assert report["generated"][0] not in report["failed"]
    (failed_id, problem), = report["failed"].items()
    assert "not JSON" in problem and "after 3 attempts" in problem
    chat_server["script"] = [nine, nine, nine]
    report = json.loads(_generate(site_dir, chat_server).stdout)
    assert report["failed"] and "did not give 3-5 items" in next(iter(report["failed"].values()))


def test_an_edited_box_is_asked_again(site_dir, chat_server):
    _generate(site_dir, chat_server)
    page = site_dir / "junior" / "平方根.html"
    text = page.read_text(encoding="utf-8")
    first = next(c for c in extract(load_config(site=site_dir)).chunks
                 if c.material == "平方根" and c.learns_source == "generated")
    page.write_text(text.replace(first.title, first.title + "（改訂）", 1), encoding="utf-8")
    edited = next(c for c in extract(load_config(site=site_dir)).chunks if c.id == first.id)
    assert edited.learns_source == "heuristic"  # the stored learns were for the old text
    report = json.loads(_generate(site_dir, chat_server).stdout)
    assert report["generated"] == [first.id]


def test_without_a_model_the_command_says_how_to_get_one(site_dir, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["learns", "generate", "--site", str(site_dir)])
    assert result.exit_code == 1 and "set OPENAI_API_KEY, or pass --base-url" in result.output
    assert "keep their heuristic learns" in result.output


def test_a_server_that_dies_mid_run_keeps_the_answers_already_generated(site_dir, chat_server):
    chat_server["answers"] = 2
    result = _generate(site_dir, chat_server, "--retries", "1", "--timeout", "30")
    target = site_dir / "_data" / "learns.generated.yml"
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: cannot reach the chat model at {chat_server['url']}/ (")
    assert result.output.rstrip().endswith(f"Fix: start the server or check --base-url, then run again; "
                                           f"2 new answer(s) already saved in {target}")
    stored = yaml.safe_load(target.read_text(encoding="utf-8"))
    saved = [f"{m}#{a}" for m, anchors in stored.items() for a in anchors]
    assert len(saved) == 2 and all(stored[m][a]["learns"] == json.loads(GOOD)["learns"]
                                   for m, anchors in stored.items() for a in anchors)


def test_after_a_dead_server_the_next_run_asks_only_for_the_rest(site_dir, chat_server):
    heuristic = [c.id for c in extract(load_config(site=site_dir)).chunks
                 if c.type != "example" and c.learns_source == "heuristic"]
    chat_server["answers"] = 3
    assert _generate(site_dir, chat_server).exit_code == 1
    healthy = _start_chat_server()
    try:
        report = json.loads(_generate(site_dir, healthy).stdout)
    finally:
        healthy["stop"]()
    # The three saved answers are used by the build and not asked for (or paid for) again.
    assert report["requests"] == len(heuristic) - 3 and len(healthy["prompts"]) == len(heuristic) - 3
    stored = yaml.safe_load((site_dir / "_data" / "learns.generated.yml").read_text(encoding="utf-8"))
    assert sorted(f"{m}#{a}" for m, anchors in stored.items() for a in anchors) == sorted(heuristic)


MISSHAPEN = {
    "a list at the top": ("- 一次方程式\n- 平方根\n", 1, "the file must map page names to anchors, found a list"),
    "a page that is a list": ("一次方程式:\n  - rule-transposition\n", 2, "'一次方程式' must map anchors to entries"),
    "an entry that is a string": ("平方根:\n  def-square-root: 二乗するとaになる数\n", 2,
                                  "'平方根#def-square-root' must be a mapping with source_hash and learns, found a str"),
    "learns that are not a list": ("平方根:\n  def-square-root:\n    source_hash: abc\n    learns: 平方根の定義\n", 4,
                                   "the learns of '平方根#def-square-root' must be a list of strings"),
}


@pytest.mark.parametrize("case", MISSHAPEN)
def test_a_misshapen_generated_learns_file_is_named_by_line_and_left_alone(site_dir, chat_server, case):
    text, line, message = MISSHAPEN[case]
    target = site_dir / "_data" / "learns.generated.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    result = _generate(site_dir, chat_server)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{target}:{line}:1: error: [generated-learns] {message}" in result.output and " Fix: " in result.output
    assert chat_server["prompts"] == [] and target.read_text(encoding="utf-8") == text
    with pytest.raises(GeneratedLearnsError, match=f"{line}:1: error"):
        extract(load_config(site=site_dir))  # the build stops with the same message


def test_a_model_that_never_answers_json_stops_after_three_boxes_in_a_row_keeping_earlier_answers(
        site_dir, chat_server):
    chat_server["script"] = [GOOD] + ["Sure! Here are the learns you asked for."] * 100
    result = _generate(site_dir, chat_server)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert len(report["generated"]) == 1 and len(report["failed"]) == 3
    assert report["requests"] == 1 + 3 * 3 == len(chat_server["prompts"])  # not 3 attempts for every box
    assert report["stopped"].startswith("stopped after 3 boxes in a row got no usable answer (last: the model's "
                                        "answer is not JSON")
    assert result.stderr.splitlines()[-1] == f"Error: {report['stopped']}"  # after one warning per box
    assert "1 new answer(s) are saved in" in report["stopped"] and "Traceback" not in result.stderr
    stored = yaml.safe_load((site_dir / "_data" / "learns.generated.yml").read_text(encoding="utf-8"))
    material, anchor = report["generated"][0].split("#")
    assert stored[material][anchor]["learns"] == json.loads(GOOD)["learns"]
