"""The team setup's host tools, run as scripts (`python3 compose/member.py add alice ...`, `make up`,
`make run`) and imported as a package by the team hub and the tests (`from compose import gpus`)."""
