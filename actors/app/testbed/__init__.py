"""The test bed: what the e2e tests, the drills and the benchmarks run on, in the product.

The machine-wide lock, the loopback registry with the pause and busybox images (built by
images.sh from pause.c, both shipped beside this file), private embedded containerds in
fresh /var/tmp dirs, and the cleanup of everything such a containerd made. The drills run
from an installed wheel, so none of it may live in tests/ or bench/.
"""
