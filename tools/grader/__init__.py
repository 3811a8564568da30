"""The grader's modules (tools/grade.py is the command)."""
