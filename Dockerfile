# uc's image: `docker build -t ghcr.io/njuics/uc:0.1.0 .` (the image deploy/uc.yaml runs).
# Stage 1 builds `uc` for running controllers in a cluster: without its embedded cluster (the API server
# and node agent, cargo feature `cluster`), exactly as this command does here.
FROM docker.io/library/rust:1.95.0-bookworm AS build
WORKDIR /src
COPY . .
ARG UC_GIT_COMMIT=unknown
ENV UC_GIT_COMMIT=${UC_GIT_COMMIT}
# The `controller` profile (Cargo.toml: fat LTO, one codegen unit, optimised for size), the functions a
# controller runs linked together (deploy/controller.order, made with this image's Rust), glibc linked
# in, jemalloc without thread caches: half the resident memory of a build
# without LTO (docs/benchmarks.md, Table 5-2).
RUN bash deploy/build-controller.sh

# Stage 2: distroless (CA certificates, nsswitch.conf, no shell; uc links glibc in), as the non-root user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/controller/uc /usr/local/bin/uc
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/uc"]
CMD ["run", "--leader-elect", "--metrics-addr", "0.0.0.0:9090"]
