"""contact"""
