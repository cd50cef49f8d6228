from companion_lab.cli import main

main(prog_name="companion-lab")
