# govkit container image: one static binary that serves the document
# platform (the default command) or notify (`notify serve`).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t govkit .
#
# Base images are pinned by tag; pin them by digest too in your registry
# mirror (docker buildx imagetools inspect IMAGE) before releasing.
# deploy/dockerfile_test.go checks this file (stages, pins, user, health
# check) and runs its build command; no container engine is needed for that.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Static: no libc in the final image, and none needed.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/govkit ./cmd/govkit
# Directories the non-root user writes (named volumes copy their owner).
RUN mkdir -p /out/data /out/app/src && chown -R 65532:65532 /out/data /out/app

# distroless static: CA certificates, tzdata, /etc/passwd with the nonroot
# user (65532), and no shell or package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/govkit /usr/local/bin/govkit
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/app /app
USER 65532:65532
WORKDIR /app
ENV PORT=3002
# 3002 the document platform, 3000 notify's API, 2525 notify's inbound SMTP.
EXPOSE 3002 3000 2525
# No shell or curl in the image: the binary checks its own health endpoint.
# Run as notify, override it with http://127.0.0.1:3000/api/health.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/govkit", "healthcheck", "http://127.0.0.1:3002/api/health"]
ENTRYPOINT ["/usr/local/bin/govkit"]
CMD ["docplatform", "serve", "--data-dir", "/data"]
