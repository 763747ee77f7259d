"""metaroce.tb"""
