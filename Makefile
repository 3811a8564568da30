# A thin wrapper over Meson, so nobody needs to know Meson to use the course.
#   make                      configure (first time) and build every lab
#   make test                 build and run the tests (GPU tests skip without a GPU)
#   make run LAB=02 ARGS="--size 1000000"   build and run one lab by its number
#   make grade                run every lab, print one table, write records under build/grade/
#   make plots                draw the plots from the committed results/ (no GPU needed)
#   make deps                 install the Debian packages the course needs
#   make clean                remove the build folder
# Options: BUILD=dir (default build), ARCH=9.0 (build for one GPU architecture only).

BUILD ?= build
ARCH ?=
LAB ?=
ARGS ?=
SUBMISSION ?=
SANITIZE ?=
export PATH := $(PATH):/usr/local/cuda/bin

MESON_OPTS := $(if $(ARCH),-Dgpu_arch=$(ARCH),)

.PHONY: all build test run grade plots deps clean

all: build

$(BUILD)/build.ninja:
	@tools/ensure_deps.sh build
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	@$(if $(ARCH),meson configure $(BUILD) $(MESON_OPTS) >/dev/null,true)
	meson compile -C $(BUILD)

test:
	@tools/ensure_deps.sh test
	@$(MAKE) --no-print-directory build
	-meson test -C $(BUILD) --print-errorlogs --num-processes 2
	@python3 tools/test_summary.py $(BUILD)/meson-logs/testlog.json

run: build
	@test -n "$(LAB)" || { echo 'name a lab: make run LAB=02 ARGS="--size 1000000"'; exit 2; }
	@prog=$$(ls -d $(BUILD)/labs/$(LAB)*/ 2>/dev/null | head -n 1); \
	  test -n "$$prog" || { echo "no lab $(LAB); the labs are:"; ls $(BUILD)/labs | grep -v '\.p$$'; exit 2; }; \
	  name=$$(basename $$prog); echo "$$prog$$name $(ARGS)"; $$prog$$name $(ARGS)

# make grade [SUBMISSION=dir] [SANITIZE=1] [SEED=n] [LABS=02,04]: no GPU -> one line, exit 77,
# before anything is built. A submission is built apart (the course build is not needed).
grade: GRADE_ARGS = --build $(BUILD) $(if $(SUBMISSION),--submission $(SUBMISSION)) $(if $(SANITIZE),--sanitize) \
  $(if $(SEED),--seed $(SEED)) $(if $(LABS),--labs $(LABS)) $(if $(ARCH),--arch $(ARCH))
grade:
	@python3 tools/grade.py --preflight $(GRADE_ARGS)
	@tools/ensure_deps.sh build
	@$(if $(SUBMISSION),true,$(MAKE) --no-print-directory build)
	python3 tools/grade.py $(GRADE_ARGS)

# make plots [RECORDS=results/h100/records.jsonl]: PNG and SVG into docs/plots/.
plots:
	@tools/ensure_deps.sh plots
	python3 tools/make_plots.py $(if $(RECORDS),--records $(RECORDS))

deps:
	@tools/ensure_deps.sh all

clean:
	rm -rf $(BUILD)
