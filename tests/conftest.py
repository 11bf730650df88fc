"""Shared test configuration."""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))  # tests/oracles.py

warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
