# The roofline: each lab's best kernel (its largest size) as GFLOP/s against
# arithmetic intensity (FLOP per byte of device memory it must move), under the
# roof of the measured ceilings: the device-to-device copy bandwidth and the best
# cuBLAS SGEMM throughput measured in the same runs.
# make_plots.py sets: dir (s1.csv .. sN.csv: one point each, flop/byte,GFLOP/s;
# labels.csv: flop/byte,GFLOP/s,lab number), nseries, bw_gbps,
# peak_gflops (0: none measured), peak_name, xmin, xmax, ymin, ymax; see style.gp.
load 'style.gp'
set title sprintf("Roofline of every lab's best kernel, %s%s", gpu, peak_gflops > 0 ? "" : " (no FLOP ceiling measured yet)")
set xlabel 'arithmetic intensity, FLOP per byte (log scale)'
set ylabel 'GFLOP/s (log scale)'
set logscale xy
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set samples 400
set key outside right top Left reverse
# The roof in two pieces, each with its own entry in the key.
ridge = peak_gflops > 0 ? peak_gflops / bw_gbps : 1e300
memory_roof(x) = x <= ridge ? bw_gbps * x : NaN
compute_roof(x) = x >= ridge ? peak_gflops : NaN
if (peak_gflops > 0) {
    set arrow from ridge, ymin to ridge, peak_gflops nohead lc rgb '#aaaaaa' dt 3
}
plot memory_roof(x) with lines lc rgb '#555555' lw 2 title sprintf('copy bandwidth: %.0f GB/s', bw_gbps), \
     compute_roof(x) with lines lc rgb '#555555' dt 2 lw 2 \
         title (peak_gflops > 0 ? sprintf('%s: %.0f GFLOP/s', peak_name, peak_gflops) : ''), \
     for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with points lt i pt (i <= 8 ? 7 : i <= 16 ? 5 : 9) ps 1.6 \
         title columnheader(2), \
     dir.'/labels.csv' using 1:2:3 with labels left offset 1,0.4 font ',9' notitle
