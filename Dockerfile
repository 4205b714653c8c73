# syntax=docker/dockerfile:1
# Multi-stage build: cgo is on (mattn/go-sqlite3 now, go-nvml for the node
# agent), so the runtime image needs glibc: Debian slim, not scratch.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/suanli .

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/suanli --create-home suanli
COPY --from=build /out/suanli /usr/local/bin/suanli
USER 10001:10001
WORKDIR /var/lib/suanli
ENV SUANLI_ADDR=:8080 SUANLI_DATA_DIR=/var/lib/suanli/data
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/suanli"]
CMD ["serve"]
