# One vocabulary for humans and CI.  Every target does its own set-up.
.PHONY: demo test unit bench stack-up stack-down lint type

demo:        ## run the whole product on the local stack, replaying the sample classroom
	bash scripts/demo.sh

test:        ## the whole test suite against the real broker and PostgreSQL
	bash scripts/test.sh

unit:        ## pure unit tests only (no services)
	bash scripts/bootstrap.sh && .venv/bin/python -m pytest tests/unit

bench:       ## every benchmark; figures go to stdout (copy them into docs/performance.md)
	bash scripts/bench.sh

stack-up:
	bash scripts/bootstrap.sh && .venv/bin/vexnudge stack up

stack-down:
	.venv/bin/vexnudge stack down

lint:        ## ruff: lint rules (private access only in topology/seam/) and the one format
	bash scripts/bootstrap.sh && .venv/bin/ruff check . && .venv/bin/ruff format --check .

type:        ## mypy --strict on tree_edit/, streams/ and feedback/ (configured in pyproject.toml)
	bash scripts/bootstrap.sh && .venv/bin/mypy
