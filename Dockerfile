# syntax=docker/dockerfile:1
# Multi-stage build of the bayesd server: compile in the Rust image, run as a non-root user in a slim Debian.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p server --locked && cp target/release/bayesd /usr/local/bin/bayesd

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates=20230311+deb12u1 curl=7.88.1-10+deb12u14 \
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
