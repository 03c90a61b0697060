#!/usr/bin/env bash
# Installs the Debian packages Troupe builds, tests and trains with. Idempotent: packages that
# are already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libcaf-dev capnproto libcapnp-dev libssl-dev libtbb-dev catch2 libdnnl-dev ocl-icd-opencl-dev zlib1g-dev
  libjpeg62-turbo-dev       # JPEG decoding of RecordIO image sets (io/jpeg_codec.cpp)
  python3 python3-matplotlib  # scripts/plot_metrics.py
  python3-pil               # the RecordIO CLI tests generate JPEGs with it (skipped without)
  tao-pegtl-dev dataset-fashion-mnist
  nlohmann-json3-dev        # every JSON text: metrics lines, safetensors headers
  libcli11-dev              # the troupe command's flags (apps/flags.cpp)
  libcpp-httplib-dev        # the status server (status/status_server.cpp)
  prometheus chromium chromium-driver python3-selenium  # the status server's tests scrape and load it
  clang libclang-rt-14-dev  # the wire decoder's fuzz test (scripts/fuzz_frames.sh)
  clang-format              # .ci/run checks the sources against .clang-format
  openmpi-bin iproute2      # cluster tests: a job under mpirun, hosts in network namespaces
  faketime                  # cli:timeline_clock runs a worker with its clocks ahead
  openssl                   # the README's `openssl rand` for a cluster secret (cli:readme_commands)
)
if [[ "${TROUPE_WITH_TORCH:-0}" == 1 ]]; then
  # OpenBLAS: without it python3-torch falls back to the slow reference BLAS.
  packages+=(python3-torch python3-numpy libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
