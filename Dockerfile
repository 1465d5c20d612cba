# The compute-bot image used by the GitHub Action (action.yml runs it by digest).
#
# No compiling here and no base image: scripts/build-bot-image puts the release
# binary, the shared libraries it links (glibc), and Debian's CA certificates into
# rootfs/ beside this file, and this builds FROM scratch over it. Nothing is pulled,
# so it builds offline; .github/workflows/release.yml uses the same script for
# linux/amd64 and linux/arm64.
#
#   cargo build --release --locked --bin compute-bot
#   scripts/build-bot-image target/release/compute-bot compute-bot:dev
#
# The bot does not run Python itself: it starts sandbox containers through the
# Docker engine of the runner, whose socket GitHub mounts into every container
# action at /var/run/docker.sock.
FROM scratch
COPY rootfs/ /
ARG VERSION=dev
ENV PATH=/usr/local/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.title="compute-bot" \
      org.opencontainers.image.description="Answers /compute questions with code that ran in a locked-down sandbox" \
      org.opencontainers.image.version="${VERSION}"
# Container actions run as root (the runner mounts the workspace and the Docker
# socket owned by root); the user code never runs here, only in the sandbox.
ENTRYPOINT ["/usr/local/bin/compute-bot"]
CMD ["action"]
