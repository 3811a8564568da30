# Labs 15 and 16: the time of one attention forward pass against the sequence
# length N, unfused (lab 15: scores, softmax, output as separate kernels through
# N x N matrices in memory) vs FlashAttention (lab 16: one kernel, no N x N).
# Whole passes only (not lab 15's single-stage rows). When lab 16 re-runs lab 15's
# pipelines (unfused_lab15, cublas_lab15), only lab 16's run is drawn.
# make_plots.py sets: dir (s1.csv .. sN.csv: seq,ms), nseries, dim, labs; see style.gp.
load 'style.gp'
set title sprintf("Attention forward pass, one head: time vs N, head dim %d, %s\n(%s)", dim, gpu, labs)
set xlabel 'sequence length N'
set ylabel 'median ms (log scale)'
set logscale x 2
set logscale y 10
set autoscale xfix
set offsets graph 0.05, graph 0.05, 0, 0
set key top left
plot for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with linespoints title columnheader(2)
