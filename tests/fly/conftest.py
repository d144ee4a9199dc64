"""The fly's tests render headless: MuJoCo's EGL back end, chosen before anything imports
flygym or MuJoCo (``pytest.importorskip("flygym")`` in the test modules does)."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
