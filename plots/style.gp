# The look every plot shares. make_plots.py sets, before the plot's script runs:
#   fmt      'png' or 'svg'      out  the file to write
#   pngterm  'pngcairo', or 'png' where gnuplot has no cairo
#   dir      the folder of the plot's CSV files (written by make_plots.py)
#   gpu      the GPU the records were measured on
#   width, height (optional, set before loading this file) the size in pixels
if (!exists('width')) { width = 960 }
if (!exists('height')) { height = 560 }
if (fmt eq 'svg') {
    set terminal svg size width,height dynamic noenhanced font 'Sans,13' background rgb 'white'
} else {
    set terminal @pngterm size width,height noenhanced font 'Sans,11' background rgb 'white'
}
set output out
set encoding utf8
set datafile separator comma
set datafile missing 'NaN'
set grid back lc rgb '#e0e0e0'
set border 3 lc rgb '#555555'
set tics nomirror
set key noenhanced box lc rgb '#cccccc' opaque
set style fill solid 0.85 border -1

# Colours for the lines, in the order the series come (colour-blind-safe set).
set linetype 1 lc rgb '#0072b2' lw 2 pt 7 ps 1.1
set linetype 2 lc rgb '#d55e00' lw 2 pt 5 ps 1.1
set linetype 3 lc rgb '#009e73' lw 2 pt 9 ps 1.3
set linetype 4 lc rgb '#cc79a7' lw 2 pt 11 ps 1.3
set linetype 5 lc rgb '#e69f00' lw 2 pt 13 ps 1.3
set linetype 6 lc rgb '#56b4e9' lw 2 pt 4 ps 1.1
set linetype 7 lc rgb '#000000' lw 2 pt 6 ps 1.1
set linetype 8 lc rgb '#999933' lw 2 pt 8 ps 1.3
set linetype cycle 8

# The measured ceilings are dashed grey lines.
ceiling_style = "lc rgb '#555555' dt 2 lw 2"
# Bars: the labs' kernels in blue, the libraries (CUB, cuBLAS) in orange.
student_color = '#0072b2'
library_color = '#d55e00'
student_rgb = 0x0072b2
library_rgb = 0xd55e00
# Bars of several kernels side by side (grouped_bars.gp): the colours of the
# linetypes above without the library's orange, which marks the library's bar.
series_colors = '#0072b2 #009e73 #cc79a7 #e69f00 #56b4e9 #000000 #999933 #882255'
