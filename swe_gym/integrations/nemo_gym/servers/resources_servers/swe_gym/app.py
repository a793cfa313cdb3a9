"""NeMo Gym's entrypoint for swe_gym's resources server (the server itself: swe_gym.integrations.nemo_gym.server)."""

from swe_gym.integrations.nemo_gym.server import SweGymResourcesServer

if __name__ == "__main__":
    SweGymResourcesServer.run_webserver()
