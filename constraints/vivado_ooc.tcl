# Vivado non-project flow for one MetaRoCE block, out of context (not run by the project:
# it has no Vivado). Written by metaroce.sim.fpga_build.vivado_tcl_text.
#   metaroce build BLOCK --width W --target xcvu9p --out DIR    (writes DIR/BLOCK.v, DIR/BLOCK.xdc)
#   vivado -mode batch -source constraints/vivado_ooc.tcl -tclargs BLOCK DIR/BLOCK.v DIR/BLOCK.xdc
# Optional 4th and 5th arguments: part (default xcvu9p-flga2104-2L-e), output directory.
if {$argc < 3} {
    puts "usage: vivado -mode batch -source vivado_ooc.tcl -tclargs TOP VERILOG XDC ?PART? ?OUTDIR?"
    exit 2
}
set top     [lindex $argv 0]
set verilog [lindex $argv 1]
set xdc     [lindex $argv 2]
set part    [expr {$argc > 3 ? [lindex $argv 3] : "xcvu9p-flga2104-2L-e"}]
set outdir  [expr {$argc > 4 ? [lindex $argv 4] : "vivado-$top"}]
file mkdir $outdir
read_verilog -sv $verilog
read_xdc -mode out_of_context $xdc
synth_design -top $top -part $part -mode out_of_context
report_utilization -file $outdir/utilization_synth.rpt
opt_design
place_design
phys_opt_design
route_design
report_utilization -file $outdir/utilization.rpt
report_timing_summary -max_paths 10 -file $outdir/timing_summary.rpt
report_design_analysis -logic_level_distribution -file $outdir/logic_levels.rpt
write_checkpoint -force $outdir/$top.dcp
