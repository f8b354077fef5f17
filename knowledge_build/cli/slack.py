"""CLI: `knowledge-build slack` runs the Slack app (slack_app.py) in Socket Mode or HTTP mode.

The tokens come from the environment only (SLACK_BOT_TOKEN, and SLACK_APP_TOKEN for Socket Mode or
SLACK_SIGNING_SECRET for HTTP mode), never from flags, so they stay out of shell history and `ps`.
A missing one is one error line naming the variable and where Slack shows its value.
"""

from __future__ import annotations

import os

import click

import knowledge_build as kb

from .common import INDEX_OPTION, SITE_OPTION, fail_on_library_errors

# variable -> where its value is found (the error line for a missing one says it)
WHERE = {
    "SLACK_BOT_TOKEN": "the Bot User OAuth Token, xoxb-…, in the Slack app's settings › OAuth & Permissions",
    "SLACK_SIGNING_SECRET": "the Signing Secret in the Slack app's settings › Basic Information › App Credentials",
    "SLACK_APP_TOKEN": "an App-Level Token, xapp-…, with the connections:write scope, in the Slack app's "
                       "settings › Basic Information › App-Level Tokens (and turn Socket Mode on)",
}
NEEDED = {"socket": ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"), "http": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")}


def slack_tokens(mode: str, env=None) -> dict[str, str]:
    """The variables `mode` needs, from the environment; one error line naming every missing one."""
    env = os.environ if env is None else env
    missing = [name for name in NEEDED[mode] if not env.get(name, "").strip()]
    if missing:
        fixes = "; ".join(f"{name}: {WHERE[name]}" for name in missing)
        raise click.ClickException(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set "
                               f"(needed for --mode {mode}). Fix: set {fixes}. See .env.example.")
    return {name: env[name].strip() for name in NEEDED[mode]}


@click.command("slack")
@click.option("--mode", type=click.Choice(["socket", "http"]), default="socket", show_default=True,
              help="socket: connect out to Slack (no public URL needed; SLACK_APP_TOKEN). http: receive "
                   "the Events API at POST /slack/events (SLACK_SIGNING_SECRET).")
@click.option("--host", default="0.0.0.0", show_default=True, help="http mode: the address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=3000, show_default=True, envvar="PORT",
              help="http mode: the port to listen on (default: $PORT when set, else 3000).")
@click.option("--store", help="The web sources store: a SQLite file or a postgresql:// URL. Default: setting "
                              "store (KB_STORE), else database_url, else .knowledge-notes.sqlite.")
@INDEX_OPTION
@SITE_OPTION
@fail_on_library_errors
def slack(mode, host, port, store, index_dir, site):
    """Run the Slack app: @mention questions answered from the knowledge (sources listed), and the
    rag crawl / add / status / delete commands, every reply in the mention's thread."""
    from ..serve.slack_app import create_app, make_http_server

    tokens = slack_tokens(mode)
    config = kb.load_config(store=store, index=index_dir, site=site)
    app = create_app(config, token=tokens["SLACK_BOT_TOKEN"], signing_secret=tokens.get("SLACK_SIGNING_SECRET"))
    try:
        if mode == "socket":
            from slack_bolt.adapter.socket_mode import SocketModeHandler

            click.echo("Slack app connecting in Socket Mode (Ctrl-C stops it)", err=True)
            SocketModeHandler(app, tokens["SLACK_APP_TOKEN"]).start()
        else:
            server = make_http_server(app, host, port)
            bound = server.server_address
            click.echo(f"Slack app listening on http://{bound[0]}:{bound[1]}/slack/events "
                       "(GET /health; Ctrl-C stops it)", err=True)
            try:
                server.serve_forever()
            finally:
                server.server_close()
    except KeyboardInterrupt:
        pass
    finally:
        app.knowledge_bot.close()
