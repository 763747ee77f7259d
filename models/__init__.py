"""metaroce.models"""
