"""Why is a kernel slow, without performance counters: the compiled kernel
(binary.py: resources and the SASS instruction mix, from cuobjdump), the
occupancy those resources allow (occupancy.py), experiments through the lab's
own flags (experiments.py), the diagnosis from all three (nocounters.py), and
the comparison with Nsight Compute's diagnosis (compare.py). tools/profile.py is
the command; docs/profiling.md teaches both paths."""
