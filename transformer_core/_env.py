"""Process settings that have to be made before PyTorch is loaded; the package imports this module first.

Idle OpenMP worker threads normally spin while they wait for the next parallel region. On a busy machine (other
processes, or several users training at once in one process) the spinning threads take the cores the working
threads need. Measured on a 2-core machine under load: 60 training steps of the reverse task took 100-170 s
with two spinning threads and 4-5 s with ``OMP_WAIT_POLICY=PASSIVE``. A value set by the user is kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
