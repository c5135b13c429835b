def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs a real model on the CPU (seconds to a minute); CI runs it")
