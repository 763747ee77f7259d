"""metaroce.sim"""
