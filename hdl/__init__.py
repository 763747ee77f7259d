"""metaroce.hdl"""
