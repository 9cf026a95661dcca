#!/usr/bin/env bash
# Build the Certus image: a static certus binary (cgo, for ICU's regular
# expressions, linked statically) into deploy/docker, then the image from
# it. Usage: deploy/docker/build.sh [TAG]   (default certus:latest)
set -euo pipefail
cd "$(dirname "$0")"
tag=${1:-certus:latest}
# a static link needs the static archives of ICU, libstdc++ and libc
for lib in libicuuc.a libicui18n.a libicudata.a libstdc++.a libc.a; do
  if [ "$(gcc -print-file-name=$lib 2>/dev/null)" = "$lib" ]; then
    echo "build.sh: $lib not found: install gcc and libicu-dev (Debian: apt-get install gcc libicu-dev)" >&2
    exit 2
  fi
done
echo "building the static binary (a few minutes on two cores)..."
CGO_ENABLED=1 go build -tags netgo,osusergo,timetzdata -trimpath \
  -ldflags '-s -w -linkmode external -extldflags "-static"' \
  -o certus ../../cmd/certus 2> >(grep -v -e dlopen -e uprv_dl_open -e "^# github.com/certusdb" >&2 || true)
if ! out=$(docker build -t "$tag" . 2>&1); then
  echo "$out" >&2
  exit 1
fi
echo "built image $tag"
