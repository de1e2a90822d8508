from streamherd.cli import main

main()
