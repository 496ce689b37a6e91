"""Configuration: flags, the KubeletConfiguration file, their origins and checks."""
