"""Placeholder replaced below."""
def predict_installed(program, devices, size):
    return None
