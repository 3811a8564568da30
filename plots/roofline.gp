# The roofline: each lab's best kernel (its largest size) as GFLOP/s against
# arithmetic intensity (FLOP per byte of device memory it must move), under three
# ceilings, each one measured and taken from the records, each labelled with its
# value and the records it comes from:
#   memory        the device-to-device copy bandwidth (d2d_copy_gbps): the slope
#   FP32          cuBLAS SGEMM on the CUDA cores (lab 18's cublas, no TF32): flat
#   tensor cores  cuBLAS's FP16 GEMM (lab 30's cublas): flat, far higher
# The slope runs up to the highest ceiling; each flat one starts where it meets the
# slope (its ridge). Baselines, library pipelines, CPU rows and diagnostics (lab
# 17's *_single_head) are left out. Kernels on tensor cores (labs 16, 17 and 31's
# FP16/BF16 kernels, lab 30's ladder) are stars, drawn apart from their lab's best
# FP32 kernel: their roof is the tensor-core ceiling, not the FP32 one.
# make_plots.py sets: dir (s1.csv .. sN.csv: one point each, flop/byte,GFLOP/s;
# labels.csv: where each label's centre goes (placed by make_plots.py), lab numbers), nseries, ptypes (point type of each
# series), ntensor (how many tensor-core points); bw_gbps, bw_label, bw_label_x,
# bw_label_y, bw_angle (the copy's label, along the slope); fp32_gflops, fp32_head,
# fp32_source, tensor_gflops, tensor_head, tensor_source (0 and '': not in the
# records) and, for those that are, *_label_x, *_label_y (the label's right end);
# width, height and area_left/right/bottom/top (the plot area, fractions of the
# picture: make_plots.py places the labels for it); xmin, xmax, ymin, ymax; see style.gp.
load 'style.gp'
set title sprintf("Roofline of every lab's best kernel, %s%s", gpu, \
    fp32_gflops > 0 || tensor_gflops > 0 ? "" : " (no FLOP ceiling measured yet)")
set xlabel 'arithmetic intensity, FLOP per byte (log scale)'
set ylabel 'GFLOP/s (log scale)'
set logscale xy
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set lmargin at screen area_left
set rmargin at screen area_right
set bmargin at screen area_bottom
set tmargin at screen area_top
set samples 1000
set key outside right top Left reverse font ',10' spacing 0.95
memory_color = '#333333'
fp32_color = '#555555'
tensor_color = '#882255'
top = fp32_gflops > tensor_gflops ? fp32_gflops : tensor_gflops
fp32_ridge = fp32_gflops > 0 ? fp32_gflops / bw_gbps : 1e300
tensor_ridge = tensor_gflops > 0 ? tensor_gflops / bw_gbps : 1e300
memory_roof(x) = top <= 0 || x <= top / bw_gbps ? bw_gbps * x : NaN
fp32_roof(x) = x >= fp32_ridge ? fp32_gflops : NaN
tensor_roof(x) = x >= tensor_ridge ? tensor_gflops : NaN
set label bw_label at bw_label_x, bw_label_y center rotate by bw_angle font ',10' tc rgb memory_color
if (fp32_gflops > 0) {
    set arrow from fp32_ridge, ymin to fp32_ridge, fp32_gflops nohead lc rgb fp32_color dt 3
    set label fp32_head."\n".fp32_source at fp32_label_x, fp32_label_y right font ',10' tc rgb fp32_color
}
if (tensor_gflops > 0) {
    set label tensor_head."\n".tensor_source at tensor_label_x, tensor_label_y right font ',10' tc rgb tensor_color
}
plot memory_roof(x) with lines lc rgb memory_color lw 2 title 'memory roof', \
     fp32_roof(x) with lines lc rgb fp32_color dt 2 lw 2 title (fp32_gflops > 0 ? 'FP32 ceiling' : ''), \
     tensor_roof(x) with lines lc rgb tensor_color dt (10, 4, 2, 4) lw 2 \
         title (tensor_gflops > 0 ? 'tensor-core ceiling' : ''), \
     for [i=1:nseries] sprintf('%s/s%d.csv', dir, i) using 1:2 with points lt i pt int(word(ptypes, i)) \
         ps (int(word(ptypes, i)) == 3 ? 2.2 : 1.6) lw 2 title columnheader(2), \
     NaN with points lc rgb '#888888' pt 3 ps 2.2 lw 2 \
         title (ntensor > 0 ? 'stars: on tensor cores' : ''), \
     dir.'/labels.csv' using 1:2:3 with labels center font ',9' notitle
