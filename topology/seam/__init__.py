"""The one seam with Faust's and aiokafka's internals (see README.md beside this file).

Every module that reaches into a private attribute of Faust, mode or aiokafka
lives here; the rest of the project uses only what these modules export.
"""
