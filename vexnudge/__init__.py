"""The composition root: the command line, the demo, replay, the worker and gateway
processes and the local stack.  It imports every other package; none imports it."""
