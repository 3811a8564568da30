# The roofline: each lab's best kernel (its largest size) as GFLOP/s against
# arithmetic intensity (FLOP per byte of device memory it must move), under the
# roof of the measured ceilings: the device-to-device copy bandwidth and the best
# cuBLAS SGEMM (FP32, no TF32) throughput measured in the same runs. Baselines,
# library pipelines, CPU rows and diagnostics (lab 17's *_single_head) are left out.
# Labs 16 and 17 also have FP16/BF16 tensor-core kernels: drawn as stars, apart
# from their best FP32 kernel. They sit above the FP32 roof by design: tensor
# cores are a different unit, whose ceiling these records do not measure.
# make_plots.py sets: dir (s1.csv .. sN.csv: one point each, flop/byte,GFLOP/s;
# labels.csv: where each label's centre goes (placed by make_plots.py), lab numbers), nseries, ptypes (point type of each
# series), ntensor (how many tensor-core points), bw_gbps, peak_gflops (0: none
# measured), peak_name, xmin, xmax, ymin, ymax; see style.gp.
width = 1200  # wider than the others: the key is long
height = 640
load 'style.gp'
set title sprintf("Roofline of every lab's best kernel, %s%s", gpu, peak_gflops > 0 ? "" : " (no FLOP ceiling measured yet)")
set xlabel 'arithmetic intensity, FLOP per byte (log scale)'
set ylabel 'GFLOP/s (log scale)'
set logscale xy
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set samples 400
set key outside right top Left reverse font ',10' spacing 0.95
# The roof in two pieces, each with its own entry in the key.
ridge = peak_gflops > 0 ? peak_gflops / bw_gbps : 1e300
memory_roof(x) = x <= ridge ? bw_gbps * x : NaN
compute_roof(x) = x >= ridge ? peak_gflops : NaN
if (peak_gflops > 0) {
    set arrow from ridge, ymin to ridge, peak_gflops nohead lc rgb '#aaaaaa' dt 3
}
plot memory_roof(x) with lines lc rgb '#555555' lw 2 title sprintf('copy bandwidth: %.0f GB/s', bw_gbps), \
     compute_roof(x) with lines lc rgb '#555555' dt 2 lw 2 \
         title (peak_gflops > 0 ? sprintf('FP32 ceiling, %s: %.0f GFLOP/s', peak_name, peak_gflops) : ''), \
     for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with points lt i pt int(word(ptypes, i)) \
         ps (int(word(ptypes, i)) == 3 ? 2.2 : 1.6) lw 2 title columnheader(2), \
     NaN with points lc rgb '#888888' pt 3 ps 2.2 lw 2 \
         title (ntensor > 0 ? 'tensor cores (FP16/BF16): above the FP32 ceiling by design' : ''), \
     dir.'/labels.csv' using 1:2:3 with labels center font ',9' notitle
