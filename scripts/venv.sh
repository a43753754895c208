# Sourced by the other scripts: create (once) and activate the project's virtualenv.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || {
    echo "could not create a virtualenv: on Debian, install python3-venv (apt-get install python3-venv)" >&2
    exit 1
  }
fi
# shellcheck disable=SC1091
source .venv/bin/activate
python -m pip install -q --upgrade pip
