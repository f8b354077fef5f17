"""A stand-in for PostgREST behind Supabase's gateway on 127.0.0.1 (no PostgREST binary is available here), for the
tests that call the database's functions over HTTP as a browser or a tutor project does: examples/search_knowledge.mjs
(test_js_example.py) and the search box's gap report (test_gaps_box.py)."""

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
from psycopg import sql

from .served import send_json

KEY = "anon-key-of-the-test"
CORS = {"Access-Control-Allow-Origin": "*"}  # what Supabase's gateway adds to every answer, a preflight's included
# PostgREST's HTTP status for a PostgreSQL error code (its docs, "Errors"); anything else is 400.
STATUS = {"42501": 401, "42883": 404, "42P01": 404, "57014": 500}


class PostgrestStandIn(ThreadingHTTPServer):
    """Stands in for PostgREST (behind Supabase's gateway) on 127.0.0.1, for `POST /rest/v1/rpc/<function>`
    only: checks the `apikey` and `Authorization: Bearer` headers, picks the function of the public
    schema whose argument names fit the JSON body's keys (names from the catalog, never from the
    request), and runs what PostgREST runs, `from json_to_record($body) as pgrst_body(arg type, ...),
    lateral fn(arg := pgrst_body.arg, ...)` (so a JSON array becomes a vector as it does there), in a
    transaction `set local role anon`. Answers the rows as a JSON array, or PostgREST's error JSON."""

    daemon_threads = True

    def __init__(self, database_url: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.database_url = database_url
        self.requests: list[str] = []  # the paths POSTed, each once answered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def call(self, function: str, body: dict) -> tuple[int, object]:
        with psycopg.connect(self.database_url) as conn:
            found = conn.execute(
                "select p.proargnames[1:p.pronargs], array(select format_type(t, null) from unnest(p.proargtypes) as t),"
                " p.pronargs - p.pronargdefaults from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace"
                " where n.nspname = 'public' and p.proname = %s", (function,)).fetchall()
            fits = [dict(zip(names, types)) for names, types, required in found
                    if names and body.keys() <= set(names) and set(names[:required]) <= body.keys()]
            if len(fits) != 1:
                wanted = f"public.{function}({', '.join(sorted(body))})"
                return (404, _error("PGRST202", f"Could not find the function {wanted} in the schema cache")) if not fits \
                    else (300, _error("PGRST203", f"Could not choose the best candidate function for {wanted}"))
            types = fits[0]
            # the types are the catalog's own spelling (format_type), the names are quoted identifiers
            columns = sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(types[n])) for n in body)
            arguments = sql.SQL(", ").join(sql.SQL("{0} := pgrst_body.{0}").format(sql.Identifier(n)) for n in body)
            query = sql.SQL("select coalesce(json_agg(pgrst_call), '[]')::text from json_to_record(%s::json)"
                            " as pgrst_body({}), lateral {}({}) as pgrst_call").format(
                columns, sql.Identifier("public", function), arguments)
            try:
                conn.execute("set local role anon")
                return 200, json.loads(conn.execute(query, (json.dumps(body),)).fetchone()[0])
            except psycopg.Error as exc:
                code = exc.sqlstate or ""
                status = STATUS.get(code) or (503 if code[:2] in ("08", "53") else 400)
                return status, _error(code, exc.diag.message_primary, exc.diag.message_detail, exc.diag.message_hint)


def _error(code, message, details=None, hint=None) -> dict:
    return {"code": code, "message": message, "details": details, "hint": hint}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        try:
            self._post()
        finally:
            self.server.requests.append(self.path)  # once answered: what it did is in the database

    def _post(self):
        match = re.fullmatch(r"/rest/v1/rpc/([a-z_][a-z0-9_]*)", self.path)
        key = self.headers.get("apikey")
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            body = None
        if key != KEY:  # Supabase's gateway answers these two before PostgREST sees the request
            hint = "Double check your Supabase `anon` or `service_role` API key."
            self._send(401, {"message": "Invalid API key", "hint": hint} if key else
                       {"message": "No API key found in request", "hint": "No `apikey` request header or url param was found."})
        elif self.headers.get("Authorization") != f"Bearer {KEY}":
            self._send(401, _error("PGRST301", "No suitable key or wrong key type"))
        elif not match:
            self._send(404, _error("PGRST125", f"Invalid path specified in request URL: {self.path}"))
        elif not isinstance(body, dict):
            self._send(400, _error("PGRST102", "Empty or invalid json"))
        else:
            self._send(*self.server.call(match.group(1), body))

    def do_OPTIONS(self):  # noqa: N802: a browser's preflight of a cross-origin POST, answered as Supabase's gateway does
        self.send_response(204)
        for name, value in {**CORS, "Access-Control-Allow-Methods": "GET, POST, PATCH, PUT, DELETE, OPTIONS",
                            "Access-Control-Allow-Headers": "apikey, authorization, content-type, x-client-info",
                            "Content-Length": "0"}.items():
            self.send_header(name, value)
        self.end_headers()

    def _send(self, status: int, payload) -> None:
        send_json(self, status, payload, CORS)

    def log_message(self, *args):
        pass
