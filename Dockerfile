# syntax=docker/dockerfile:1
# The `fleet` binary (hub, gitjob, controller, agent and the CLI) in a small image.
#   docker build -t fleet-rs/fleet:0.1.0 .
# The charts in deploy/charts/ run it as `fleet gitjob`, `fleet controller`, `fleet agent`.

FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libcurl4-openssl-dev libssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin fleet \
 && cp target/release/fleet /usr/local/bin/fleet

FROM debian:bookworm-slim
# libcurl: gitjob's HTTPS transport; ssh: SSH remotes; ca-certificates: public Git hosts.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libcurl4 openssh-client \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/fleet /usr/local/bin/fleet
USER 65532:65532
ENV HOME=/tmp
ENTRYPOINT ["/usr/local/bin/fleet"]
CMD ["--help"]
