# Any MetaRoCE block out of context (top module from `metaroce verilog BLOCK`):
# one clock `clk`, synchronous active-high `rst` from a synchroniser in the same domain.
# Written by metaroce.sim.fpga_build.xdc_text; `metaroce build --target xcvu9p` writes it
# with the period of its --freq.
create_clock -period 4.000 -name clk [get_ports clk]
set_false_path -from [get_ports rst]
