# Installs the Debian packages Seam needs, only when something is missing.
# Sourced by scripts/test, scripts/bench and scripts/run.

SEAM_DEBIAN_PACKAGES=(libsqlite3-dev libjson-c-dev libpq-dev pkg-config sqlite3 python3)

# seam_install_packages PKG…: installs those of the Debian packages that are missing.
seam_install_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        echo "==> installing Debian packages: ${missing[*]}"
        local sudo=""
        [[ $(id -u) -ne 0 ]] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
    fi
}

seam_install_deps() {
    seam_install_packages "${SEAM_DEBIAN_PACKAGES[@]}"
    if ! command -v swift >/dev/null; then
        if [[ -x /opt/swift/usr/bin/swift ]]; then
            export PATH="/opt/swift/usr/bin:$PATH"
        else
            echo "Swift 6 is needed: install a toolchain from swift.org and put it on PATH" >&2
            return 1
        fi
    fi
}
