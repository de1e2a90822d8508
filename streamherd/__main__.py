from streamherd.cli import run

run()
