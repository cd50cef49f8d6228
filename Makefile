# The two commands of the README. Each makes its own virtual environment (.venv) and installs
# the versions locked in constraints.txt, so a new machine gets what CI saw.
PYTHON ?= python3
VENV ?= .venv
PY = $(VENV)/bin/python
PIP = $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: demo test setup setup-test browser lint wheel-check lock

## make demo: install the companion and open a scripted demo match at http://127.0.0.1:5000
## (the companion command is in $(VENV)/bin: say so first, every command of the README is one
## line away)
demo: setup
	@echo "The companion is installed in $(VENV): run '. $(VENV)/bin/activate' to put 'companion' on the PATH (or run $(VENV)/bin/companion)."
	$(PY) -m companion.cli demo

## make test: install the product and the lab (torch) and everything the tests need (Chromium
## included), then run the whole suite: tests/ and lab/tests/
test: setup-test
	$(PY) -m pytest -q

$(PY):
	$(PYTHON) -m venv $(VENV)

setup: $(PY)
	$(PIP) -e .

setup-test: browser $(PY)
	$(PIP) -e '.[test]' -e ./lab

## make wheel-check: build the wheel, install it in a clean environment away from the
## checkout, serve its main page and detect cards with it
wheel-check: $(PY)
	bash .ci/wheel-check $(PYTHON)

# Browser tests drive Debian's Chromium, and one summary test reads the PDF back with poppler's
# pdftotext; install them when we are allowed to (root) and they are missing.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
	  || ! command -v pdftotext >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver poppler-utils >/dev/null) \
	      || echo "warning: could not install chromium or poppler-utils; their tests will be skipped"; \
	  else echo "warning: chromium, chromedriver or pdftotext missing and not root; their tests will be skipped"; fi; \
	fi

lint: $(PY)
	$(PY) -m ruff check companion tests lab

## make lock: write constraints.txt again from a fresh environment with every extra installed
lock:
	rm -rf /tmp/companion-lock && $(PYTHON) -m venv /tmp/companion-lock
	/tmp/companion-lock/bin/pip install -q -e '.[test]' -e ./lab build
	/tmp/companion-lock/bin/pip freeze --exclude-editable | grep -v -i '^hanafuda-companion' | grep -v -E '^(cuda|nvidia|triton)' > constraints.txt.new
	mv constraints.txt.new constraints.txt
