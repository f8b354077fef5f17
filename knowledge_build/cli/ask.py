"""CLI for grounded answers: `knowledge-build ask "QUESTION"` (issue 15).

Retrieves from the site's index and the web sources, asks the chat model with them as context and
prints the answer followed by its sources (setting show_sources); `--format json` prints
{answer, sources, context_used, retrieval, note}. A chat model that fails is one error line, exit 1.
"""

from __future__ import annotations

import json

import click

import knowledge_build as kb

from .common import INDEX_OPTION, SITE_OPTION, fail_on_library_errors


@click.command("ask")
@click.argument("question")
@click.option("-k", "--k", "k", type=click.IntRange(1, 50),
              help="Results given to the chat model as context at most (setting retrieval_count, default 5).")
@click.option("--chat-base-url", help="An OpenAI-compatible chat server, e.g. http://127.0.0.1:8080/v1. "
                                      "Default: setting chat_base_url (KB_CHAT_BASE_URL), else OpenAI.")
@click.option("--chat-model", help="The chat model. Default: setting chat_model (KB_CHAT_MODEL), else gpt-4o-mini.")
@click.option("--no-sources", "no_sources", is_flag=True, default=None,
              help="Do not list the sources after the answer (setting show_sources: false).")
@click.option("--store", help="The web sources' store: a SQLite file or a postgresql:// URL. Default: setting "
                              "store (KB_STORE), else database_url, else .knowledge-notes.sqlite.")
@INDEX_OPTION
@SITE_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def ask(question, k, chat_base_url, chat_model, no_sources, store, index_dir, site, fmt):
    """Answer QUESTION with a chat model, grounded in the site's knowledge and the web sources."""
    from ..serve.retrieval_log import enable

    if not question.strip():
        raise click.UsageError("the question is empty: give the question to answer")
    config = kb.load_config(retrieval_count=k, chat_base_url=chat_base_url, chat_model=chat_model,
                            show_sources=False if no_sources else None, store=store, index=index_dir, site=site)
    enable(config.debug_log)
    answer = kb.ask(question, config)
    if fmt == "json":
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
        return
    from ..serve.answer import format_answer

    click.echo(format_answer(answer, config.show_sources))
