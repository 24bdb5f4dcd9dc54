# Installs the Debian packages Seam needs, only when something is missing.
# Sourced by scripts/test, scripts/bench, scripts/run and scripts/package.

SEAM_DEBIAN_PACKAGES=(libsqlite3-dev libjson-c-dev libpq-dev libsodium-dev libsystemd-dev pkg-config sqlite3 python3)
# What the tests add: a C compiler and valgrind for the C SDK, groff for the man pages, zsh for
# the completions (GeneratedDocsTests and SpecTests load them), venv for the PyPI varlink client of the
# interop test, PostgreSQL for the sync tests (started by the tests themselves through
# scripts/pg-server), systemd for journald and journalctl (JournalTests starts a journald when
# none runs), chromium and its driver for seam-web's browser tests.
SEAM_TEST_PACKAGES=(gcc make valgrind groff-base zsh python3-venv postgresql systemd chromium chromium-driver)
# What scripts/package adds: dpkg-dev for dpkg-shlibdeps (the package's Depends, read from the
# libraries its binaries link), binutils for strip, lintian to check the result, gcc and make for
# the C SDK it ships, and python3-aiohttp for the packaged seam-web its test runs. No fakeroot:
# dpkg-deb --root-owner-group gives every file root's ownership.
SEAM_PACKAGE_PACKAGES=(dpkg-dev binutils lintian gcc make python3-aiohttp)

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

# seam_varlink_venv: a virtual environment in .build/venv with PyPI's `varlink` package (a
# generic varlink client, for the interop test), `PyNaCl` (libsodium from Python, which opens
# a sealed field from Protocol/sync.md alone), `prometheus_client` (whose parser reads what
# the metrics role serves), and `aiohttp` and `selenium` (seam-web's server library, and the
# driver of its browser tests). Made once.
seam_varlink_venv() {
    if [[ ! -x .build/venv/bin/python ]] || ! .build/venv/bin/python -c "import varlink, nacl, prometheus_client, aiohttp, selenium" 2>/dev/null; then
        echo "==> a virtual environment with PyPI's varlink, PyNaCl, prometheus_client, aiohttp and selenium (.build/venv)"
        mkdir -p .build
        [[ -x .build/venv/bin/python ]] || python3 -m venv .build/venv
        .build/venv/bin/pip install -q varlink pynacl prometheus_client aiohttp selenium
    fi
}
