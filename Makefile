# The two commands of the README. Each installs what it needs, so both work on a fresh machine.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install -q --disable-pip-version-check

.PHONY: demo test setup setup-test browser lint

## make demo: install the companion and open a scripted demo match at http://127.0.0.1:5000
demo: setup
	$(PYTHON) -m companion.cli demo

## make test: install everything the tests need (Chromium included) and run the whole suite
test: setup-test
	$(PYTHON) -m pytest -q

setup:
	$(PIP) -e .

setup-test: browser
	$(PIP) -e '.[test,train]'

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

lint:
	$(PYTHON) -m ruff check companion tests
