# The compute-bot image used by the GitHub Action (action.yml: runs.using docker).
#
# Build stage: compile the release binary. Runtime stage: debian-slim with CA
# certificates only. The bot does not run Python itself: it starts sandbox
# containers through the Docker engine of the runner, whose socket GitHub mounts
# into every container action at /var/run/docker.sock.
#
# GitHub builds this file on every workflow run; to skip that, publish the image
# once and use `uses: docker://<registry>/compute-bot:<tag>` (docs/github-action.md).

FROM rust:1.95-slim-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
# Files the crate embeds at compile time (e.g. the in-sandbox runner) live here.
COPY sandbox ./sandbox
# Cargo.toml names the benchmark targets; their sources must exist.
COPY benches ./benches
RUN cargo build --release --locked --bin compute-bot \
 && strip target/release/compute-bot

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/compute-bot /usr/local/bin/compute-bot
LABEL org.opencontainers.image.title="compute-bot" \
      org.opencontainers.image.description="Answers /compute questions with code that ran in a locked-down sandbox"
# Container actions run as root (the runner mounts the workspace and the Docker
# socket owned by root); the user code never runs here, only in the sandbox.
ENTRYPOINT ["/usr/local/bin/compute-bot"]
CMD ["action"]
