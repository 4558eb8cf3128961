# syntax=docker/dockerfile:1
# Multi-stage build of the bayesd server: compile in the Rust image, run as a non-root user in a slim Debian.
# The cargo registry and the target directory are BuildKit cache mounts, so a source change recompiles the
# workspace's crates only, not every dependency.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release -p server --locked && cp target/release/bayesd /usr/local/bin/bayesd

FROM debian:bookworm-slim
# Unpinned on purpose: exact Debian revisions disappear from the archive with each point release, and these two
# come from the security-maintained bookworm suite.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/bayesd --create-home bayesd
COPY --from=build /usr/local/bin/bayesd /usr/local/bin/bayesd
USER 10001
WORKDIR /var/lib/bayesd
ENV BAYESD_BIND=0.0.0.0:8080 \
    DATABASE_URL=sqlite:///var/lib/bayesd/bayesd.db \
    BAYESD_LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["curl", "-fsS", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/usr/local/bin/bayesd"]
CMD ["serve"]
