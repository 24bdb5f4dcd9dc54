"""The seam library's tests: python3 -m unittest discover -s Protocol/python/tests -t Protocol/python"""
