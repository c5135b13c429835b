# syntax=docker/dockerfile:1
# tokenyard's container images (README, "Deploying at scale"):
#   docker build --target remote -t tokenyard:remote .      # default: remote engines, no torch
#   docker build --target embedded -t tokenyard:embedded .  # the CPU engine, torch included
# Both run `tokenyard serve` as a non-root user on port 8000, read the sealing key
# from the secret file /run/secrets/tokenyard-seal-key (replicas must share it) and
# keep the model cache in /var/cache/tokenyard. Install steps: deploy/install.sh,
# which CI also runs (scripts/check_image_steps.sh); hadolint lints this file.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS source
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
COPY deploy/install.sh ./deploy/install.sh

FROM source AS build-remote
RUN ./deploy/install.sh /opt/tokenyard /src remote

FROM source AS build-embedded
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN ./deploy/install.sh /opt/tokenyard /src embedded

FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 tokenyard \
    && useradd --system --uid 10001 --gid tokenyard --home-dir /home/tokenyard --create-home tokenyard \
    && mkdir -p /var/cache/tokenyard \
    && chown tokenyard:tokenyard /var/cache/tokenyard
# DL3064 reads "TOKEN" in the TOKENYARD_ prefix as a secret: these are settings
# (the key itself is the mounted file, never an ENV or ARG).
# hadolint ignore=DL3064
ENV PATH=/opt/tokenyard/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    TOKENYARD_CACHE=/var/cache/tokenyard \
    TOKENYARD_HOST=0.0.0.0 \
    TOKENYARD_PORT=8000 \
    TOKENYARD_SEAL_KEY_FILE=/run/secrets/tokenyard-seal-key
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status != 200)"]
ENTRYPOINT ["tokenyard", "serve"]

FROM runtime AS embedded
COPY --from=build-embedded /opt/tokenyard /opt/tokenyard
# hadolint ignore=DL3064
ENV TOKENYARD_ENGINE=embedded
USER 10001:10001

# Last, so a plain `docker build .` makes the slim image.
FROM runtime AS remote
COPY --from=build-remote /opt/tokenyard /opt/tokenyard
# hadolint ignore=DL3064
ENV TOKENYARD_ENGINE=remote
USER 10001:10001
