"""What every terminal client of the server shares: the JSON-RPC connection over stdio,
the server process, and the text helpers of the tool log.

Light on purpose: no pygls, no lsprotocol, no SDK on this import path (client start-up speed).
"""
