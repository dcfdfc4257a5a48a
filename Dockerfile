# The bot's image: Python 3.11 slim, the locked dependencies, the code, a non-root user,
# the database on a volume, /healthz as the health check. README "Deploy with Docker".

# --- dependencies, installed from the lock file (pinned, with hashes) into a venv ---
# (a venv without pip or setuptools: the base image's pip installs into it)
FROM python:3.11-slim-bookworm AS deps
RUN python -m venv --without-pip /opt/venv
COPY requirements.lock /tmp/requirements.lock
RUN pip --python /opt/venv/bin/python install --no-cache-dir --disable-pip-version-check \
        --require-hashes --no-deps -r /tmp/requirements.lock

# --- the image that runs ---
FROM python:3.11-slim-bookworm
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DATABASE_PATH=/data/bot.sqlite3 \
    WEB_HOST=0.0.0.0 \
    WEB_PORT=8080 \
    HEALTH_ENABLED=true
# no installer at run time: the base image's pip, setuptools and wheel go, and the
# venv never had them
RUN python -m pip uninstall --yes --disable-pip-version-check pip setuptools wheel
# a system user without a shell or home; it owns only the database folder
RUN groupadd --system --gid 10001 bot \
    && useradd --system --uid 10001 --gid bot --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin bot \
    && mkdir /data \
    && chown bot:bot /data
COPY --from=deps /opt/venv /opt/venv
WORKDIR /app
COPY bot ./bot
COPY services ./services
COPY tools ./tools
COPY storage ./storage
# compiled once here: the code is read-only for the bot user
RUN python -m compileall -q /app
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8080
# 200 only while the bot can store and deliver messages (README "Health")
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('WEB_PORT', '8080') + '/healthz', timeout=8)"]
# exec form: the bot is the process that gets SIGTERM (docker stop) and drains its turns
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "bot"]
