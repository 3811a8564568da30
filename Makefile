# A thin wrapper over Meson, so nobody needs to know Meson to use the course.
#   make                      configure (first time) and build every lab
#   make test                 build and run the tests (GPU tests skip without a GPU)
#   make run LAB=2 ARGS="--size 1000000"   build and run one lab (LAB=2, 02, 02_timed_vector_add
#                             or timed_vector_add)
#   make grade                run every lab, print one table, write records under build/grade/
#   make grade-class SUBMISSIONS=dir [SLURM=1]  grade every student's submission: class.csv,
#                             report.html, similarity.csv (see below)
#   make plots                draw the plots from the committed results/ (no GPU needed)
#   make csv                  results/h100/records.csv from records.jsonl (made on demand, not tracked)
#   make deps                 install the packages the course needs
#   make clean                remove the build folder
#   make starter OUT=dir      write the student's starter kit: the course with the exercises'
#                             solutions replaced by stubs (tools/starter.py)
#   make gradescope-autograder OUT=file.zip KEY=... KNOWN_HOSTS=... HOST=... ASSIGNMENT=... LABS=...
#                             Gradescope's autograder: compiles, then grades on the GPU host
#                             over SSH (tools/gradescope/, docs/instructor-guide.md)
# Options: BUILD=dir (default build), ARCH=9.0 (build for one GPU architecture only).
# Meson is the system's, or, where that is older than 1.0.1 (Ubuntu 22.04), Meson
# 1.0.1 from PyPI in BUILD/.venv, made by tools/ensure_deps.sh: hence that bin/
# first on PATH.

BUILD ?= build
ARCH ?=
LAB ?=
ARGS ?=
SUBMISSION ?=
SANITIZE ?=
SEED ?=
LABS ?=
export PATH := $(abspath $(BUILD))/.venv/bin:$(PATH):/usr/local/cuda/bin

MESON_OPTS := $(if $(ARCH),-Dgpu_arch=$(ARCH),)

.PHONY: all build configure test run grade plots csv deps clean starter

all: build

$(BUILD)/build.ninja:
	@tools/ensure_deps.sh build $(BUILD)
	meson setup $(BUILD) $(MESON_OPTS)

configure: $(BUILD)/build.ninja
	@$(if $(ARCH),meson configure $(BUILD) $(MESON_OPTS) >/dev/null,true)

build: configure
	meson compile -C $(BUILD)

test:
	@tools/ensure_deps.sh test $(BUILD)
	@$(MAKE) --no-print-directory build
	-meson test -C $(BUILD) --print-errorlogs --num-processes 2
	@python3 tools/test_summary.py $(BUILD)/meson-logs/testlog.json

# LAB names one lab folder: by number (1 and 01 are both lab 01, never 10), by
# folder (01_vector_add) or by name (vector_add). Checked before anything is
# built; only that lab is compiled. A lab that does not exist: the list, exit 2.
run:
	@test -n "$(LAB)" || { echo 'name a lab: make run LAB=02 ARGS="--size 1000000"'; exit 2; }
	@case '$(LAB)' in \
	  *[!0-9]*) pattern="[0-9][0-9]_$$(echo '$(LAB)' | sed 's/^[0-9][0-9]_//')" ;; \
	  *) n=$$(echo '$(LAB)' | sed 's/^0*//'); pattern="$$(printf '%02d' "$${n:-0}")_*" ;; \
	esac; \
	lab=$$(cd labs && for d in $$pattern; do [ -f "$$d/main.cu" ] && echo "$$d"; done | head -n 1); \
	if [ -z "$$lab" ]; then \
	  echo "no lab '$(LAB)'. The labs (make run LAB=01, LAB=1 or LAB=vector_add):"; \
	  for d in labs/[0-9][0-9]_*; do [ -f "$$d/main.cu" ] && echo "  $${d#labs/}"; done; \
	  exit 2; \
	fi; \
	$(MAKE) --no-print-directory configure && meson compile -C $(BUILD) "labs/$$lab/$$lab" || exit $$?; \
	echo "$(BUILD)/labs/$$lab/$$lab $(ARGS)"; exec "$(BUILD)/labs/$$lab/$$lab" $(ARGS)

# make grade [SUBMISSION=dir [NO_SANDBOX=1]] [SANITIZE=0|1] [SEED=n] [LABS=02,04] [ARCH=9.0]
# SANITIZE=0 passes --no-sanitize, SANITIZE=1 --sanitize; unset, tools/grade.py decides.
# Without a GPU: one line, "grade: skipped: ...", before anything is built, and
# make exits 0 (make itself can only exit 0 or 2, and a skip is no error);
# tools/grade.py run directly exits 77 there. A submission is built apart, in the
# sandbox; the course's own build is its judge, so it is built too. NO_SANDBOX=1
# passes --no-sandbox (warned on every run, recorded in results.json).
NO_SANDBOX ?=
GRADE_ARGS = --build $(BUILD) $(if $(SUBMISSION),--submission $(SUBMISSION)) \
  $(if $(filter 0,$(SANITIZE)),--no-sanitize,$(if $(SANITIZE),--sanitize)) \
  $(if $(SEED),--seed $(SEED)) $(if $(LABS),--labs $(LABS)) $(if $(ARCH),--arch $(ARCH)) \
  $(if $(filter 1 yes,$(NO_SANDBOX)),--no-sandbox)
grade:
	@python3 tools/grade.py --preflight $(GRADE_ARGS); status=$$?; \
	[ $$status -ne 77 ] || exit 0; [ $$status -eq 0 ] || exit $$status; \
	tools/ensure_deps.sh build $(BUILD) && \
	$(MAKE) --no-print-directory build && \
	echo "python3 tools/grade.py $(strip $(GRADE_ARGS))" && python3 tools/grade.py $(GRADE_ARGS)

# make grade-class SUBMISSIONS=dir [SLURM=1 [PARTITION=p] [ACCOUNT=a] [TIME=01:00:00] [CPUS_PER_TASK=2]] [NOGPU=1]
#   [MAX_GPUS=K: at most K GPUs at once, here or as Slurm array tasks (--array=0-N%K)]
#   [SEED=n] [LABS=01,04] [ARCH=9.0] [SANITIZE=0] [TIMEOUT=seconds] [OUT=dir] [CACHE=dir]
# Every student's submission (a folder or zip each, or a Gradescope export) graded with
# one seed, one per GPU here or one Slurm array task each: OUT (default
# BUILD/grade-class/<UTC time>) gets class.csv, similarity.csv, report.html and each
# student's grade/ (tools/grade_class.py, docs/instructor-guide.md). With no GPU, or
# NOGPU=1 (Slurm: no --gres): build-only, compile errors per lab, GPU steps not run.
SUBMISSIONS ?=
SLURM ?=
PARTITION ?=
ACCOUNT ?=
TIME ?=
NOGPU ?=
TIMEOUT ?=
CACHE ?=
CPUS_PER_TASK ?=
MAX_GPUS ?=
.PHONY: grade-class
grade-class:
	@test -n "$(SUBMISSIONS)" || { echo 'name the submissions: make grade-class SUBMISSIONS=dir (a folder or zip per student)'; exit 2; }
	@tools/ensure_deps.sh build $(BUILD)
	python3 tools/grade_class.py '$(SUBMISSIONS)' --build $(BUILD) $(if $(ARCH),--arch $(ARCH)) \
	  $(if $(SEED),--seed $(SEED)) $(if $(LABS),--labs $(LABS)) $(if $(filter 0,$(SANITIZE)),--no-sanitize) \
	  $(if $(filter 1 yes,$(NOGPU)),--no-gpu) $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(OUT),--out '$(OUT)') $(if $(CACHE),--cache '$(CACHE)') \
	  $(if $(MAX_GPUS),--max-gpus $(MAX_GPUS)) $(if $(filter 1 yes,$(SLURM)),--slurm $(if $(PARTITION),--partition '$(PARTITION)') \
	    $(if $(ACCOUNT),--account '$(ACCOUNT)') $(if $(TIME),--time '$(TIME)') \
	    $(if $(CPUS_PER_TASK),--cpus-per-task $(CPUS_PER_TASK)))

# make plots [RECORDS=results/h100/records.jsonl]: PNG and SVG into docs/plots/.
plots:
	@tools/ensure_deps.sh plots
	python3 tools/make_plots.py $(if $(RECORDS),--records $(RECORDS))

# make csv [RECORDS=results/h100/records.jsonl]: the records as one CSV table next to
# them (records.csv). Made from records.jsonl on demand; git does not track it.
csv:
	python3 tools/records_to_csv.py $(or $(RECORDS),results/h100/records.jsonl)

deps:
	@tools/ensure_deps.sh all $(BUILD)

# make starter OUT=dir: a copy of the course (no .git, no build folders) whose
# exercise variants (tools/grading.toml exercise_variants) are stubs that fail
# "not implemented yet"; docs/instructor-guide.md. Needs no GPU.
OUT ?=
starter:
	@test -n "$(OUT)" || { echo 'name the folder: make starter OUT=../cudalabs-starter'; exit 2; }
	python3 tools/starter.py '$(OUT)'

clean:
	rm -rf $(BUILD)

# ---- make tune, make profile (lab 28 and docs/profiling.md) -----------------------------
# make tune LAB=NN [VARIANT=v] [SWEEP="block=64..1024 blocks_per_sm=0,1,2,4"] [ARGS="--size 2^24"]
#   the lab with --sweep (its own sweep unless SWEEP is given) at its benchmark
#   size: one record per point, the best point per size, heat maps; BUILD/tune/.
# make profile LAB=NN VARIANT=v [ARGS="--size N"] [KERNEL=regex] [EXPECT=memory-bound] [COUNTERS=0|1]
#   what limits the variant's kernel, in plain words: Nsight Compute where it may
#   read the GPU's counters (the report stays in BUILD/profile/LAB-VARIANT.ncu-rep)
#   and, always, the counter-free diagnosis (timed experiments, the binary);
#   COUNTERS=0 only the counter-free one, COUNTERS=1 only Nsight Compute.
# Without a GPU (or ncu) both say "skipped" and make exits 0, as make grade does.
VARIANT ?=
SWEEP ?=
KERNEL ?=
EXPECT ?=
COUNTERS ?=
.PHONY: tune profile

tune: configure
	@test -n "$(LAB)" || { echo 'name a lab: make tune LAB=02 [VARIANT=float4] [SWEEP="block=64..1024"]'; exit 2; }
	@python3 tools/tune.py '$(LAB)' --build $(BUILD) $(if $(VARIANT),--variant='$(VARIANT)') \
	  $(if $(SWEEP),--sweep='$(SWEEP)') $(if $(ARGS),--args='$(ARGS)'); status=$$?; \
	[ $$status -ne 77 ] || exit 0; exit $$status

profile: configure
	@test -n "$(LAB)" -a -n "$(VARIANT)" || { echo 'name a lab and a variant: make profile LAB=02 VARIANT=float4'; exit 2; }
	@python3 tools/profile.py '$(LAB)' '$(VARIANT)' --build $(BUILD) $(if $(ARGS),--args='$(ARGS)') \
	  $(if $(KERNEL),--kernel='$(KERNEL)') $(foreach e,$(EXPECT),--expect=$(e)) \
	  $(if $(COUNTERS),--counters='$(COUNTERS)') $(if $(SWEEP),--sweep='$(SWEEP)'); status=$$?; \
	[ $$status -ne 77 ] || exit 0; exit $$status

# ---- make gradescope-autograder (tools/gradescope/, docs/instructor-guide.md) ----------
# make gradescope-autograder OUT=autograder.zip KEY=cudalabs_bridge KNOWN_HOSTS=known_hosts
#   HOST=gpu.example.edu ASSIGNMENT=lab02 LABS=02 [PORT=22] [SSH_USER=cudalabs] [ARCH=9.0] [TIMEOUT=2400]
# The zip to upload as a Gradescope assignment's autograder: setup.sh, run_autograder,
# the key, the host's key and the course. Each bad or missing input: a message, exit 2.
.PHONY: gradescope-autograder
gradescope-autograder:
	@test -n "$(OUT)" || { echo 'name the zip: make gradescope-autograder OUT=autograder.zip KEY=... KNOWN_HOSTS=... HOST=... ASSIGNMENT=... LABS=...'; exit 2; }
	@python3 tools/gradescope/bridge.py package --out '$(OUT)' --key '$(KEY)' --known-hosts '$(KNOWN_HOSTS)' \
	  --host '$(HOST)' --assignment '$(ASSIGNMENT)' --labs '$(LABS)' $(if $(PORT),--port $(PORT)) \
	  $(if $(SSH_USER),--user '$(SSH_USER)') $(if $(ARCH),--arch $(ARCH)) $(if $(TIMEOUT),--timeout $(TIMEOUT))
